def convert_image_mode(image, mode):
    return image.convert(mode)
